//! `tocsin plugin catalogue`: the built-in catalogue of docs/plugins.md and the built-in
//! list of README.md, written from what each built-in says about itself (its description
//! and its configuration schema), so the documentation cannot drift from the schemas.
//!
//! Each generated part sits between two marker comments in its file; `--update FILE`
//! rewrites the parts a file holds and leaves the rest of it alone.

use crate::plugins::describe::PluginDescription;
use crate::plugins::{HostSettings, PluginHost};
use serde_json::{Map, Value};
use std::fmt::Write;
use std::path::PathBuf;

/// The command that rewrites the generated parts of the documentation.
pub const REGENERATE: &str =
    "cargo run -p tocsin -- plugin catalogue --update docs/plugins.md --update README.md";

/// One generated part of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The name in its markers (`monitors`, `channels`, `builtins`).
    pub name: &'static str,
    /// The Markdown between the markers, ending with a newline.
    pub body: String,
}

/// The line that opens block `name`.
pub fn begin_marker(name: &str) -> String {
    format!(
        "<!-- catalogue:{name} begin (generated from the plugins' schemas by `tocsin plugin catalogue`; do not edit) -->"
    )
}

/// The line that closes block `name`.
pub fn end_marker(name: &str) -> String {
    format!("<!-- catalogue:{name} end -->")
}

/// Describe every built-in plugin (and the server's own `heartbeat` type), as
/// `GET /v1/plugins` lists them. `cache_dir` keeps compiled components, as the server's.
pub async fn builtin_descriptions(
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<Vec<PluginDescription>> {
    let mut host = PluginHost::new(cache_dir, &HostSettings::default())?;
    let refused = host.load_all(PluginHost::builtin_sources()).await;
    if let Some((origin, error)) = refused.first() {
        anyhow::bail!("a built-in plugin was refused ({origin}): {error}");
    }
    Ok(host.descriptions())
}

/// The generated parts: the monitor, channel and pipeline step tables of docs/plugins.md
/// and the list of built-ins in README.md.
pub fn blocks(plugins: &[PluginDescription]) -> Vec<Block> {
    let of = |kind: &str| -> Vec<&PluginDescription> {
        plugins.iter().filter(|p| p.kind == kind).collect()
    };
    let (monitors, channels, pipelines) = (of("monitor"), of("channel"), of("pipeline"));
    let mut monitor_table = String::from("| Type | Checks | Fields |\n|---|---|---|\n");
    for p in &monitors {
        let place = if p.top_level_fields {
            "top level"
        } else {
            "under `config`"
        };
        let _ = writeln!(
            monitor_table,
            "| `{}` | {} | {place}: {} |",
            p.name,
            cell(&p.description),
            fields(&p.config_schema)
        );
    }
    let mut channel_table =
        String::from("| Type | Sends | Asks for | Fields |\n|---|---|---|---|\n");
    for p in &channels {
        let mut asks: Vec<String> = p.abilities.iter().map(|a| format!("`{a}`")).collect();
        asks.extend(p.https_only.iter().map(|f| format!("https `{f}`")));
        let _ = writeln!(
            channel_table,
            "| `{}` | {} | {} | {} |",
            p.name,
            cell(&p.description),
            if asks.is_empty() {
                "nothing".to_string()
            } else {
                asks.join(", ")
            },
            fields(&p.config_schema)
        );
    }
    let mut pipeline_table = String::from("| Step | Does | Fields |\n|---|---|---|\n");
    for p in &pipelines {
        let _ = writeln!(
            pipeline_table,
            "| `{}` | {} | {} |",
            p.name,
            cell(&p.description),
            fields(&p.config_schema)
        );
    }
    let names = |list: &[&PluginDescription]| -> String {
        list.iter()
            .map(|p| format!("`{}`", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut builtins = format!(
        "- Monitors: {}.\n- Channels: {}.\n",
        names(&monitors),
        names(&channels)
    );
    if !pipelines.is_empty() {
        let _ = writeln!(builtins, "- Alert pipeline steps: {}.", names(&pipelines));
    }
    vec![
        Block {
            name: "monitors",
            body: monitor_table,
        },
        Block {
            name: "channels",
            body: channel_table,
        },
        Block {
            name: "pipelines",
            body: pipeline_table,
        },
        Block {
            name: "builtins",
            body: builtins,
        },
    ]
}

/// Every block with its markers, one after the other.
pub fn render(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        let _ = write!(
            out,
            "{}\n{}{}\n\n",
            begin_marker(b.name),
            b.body,
            end_marker(b.name)
        );
    }
    out
}

/// The blocks `text` holds, by name, in order of appearance.
pub fn blocks_in(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!-- catalogue:") {
        let after = &rest[start + "<!-- catalogue:".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let begin = begin_marker(&name);
        if !rest[start..].starts_with(&begin) {
            return Err(format!(
                "a catalogue marker that is not `{begin}` (or an end with no beginning)"
            ));
        }
        let body_start = start + begin.len() + 1;
        let end = end_marker(&name);
        let Some(len) = rest.get(body_start..).and_then(|r| r.find(&end)) else {
            return Err(format!("`{begin}` has no `{end}`"));
        };
        found.push((name, rest[body_start..body_start + len].to_string()));
        rest = &rest[body_start + len + end.len()..];
    }
    Ok(found)
}

/// `text` with every block it holds replaced by the generated one of the same name.
/// Returns the new text and the names replaced; an unknown block name is an error.
pub fn update(text: &str, blocks: &[Block]) -> Result<(String, Vec<&'static str>), String> {
    let mut out = text.to_string();
    let mut replaced = Vec::new();
    for (name, old) in blocks_in(text)? {
        let Some(new) = blocks.iter().find(|b| b.name == name) else {
            return Err(format!("no generated block is called `{name}`"));
        };
        let whole = |body: &str| format!("{}\n{body}{}", begin_marker(&name), end_marker(&name));
        out = out.replacen(&whole(&old), &whole(&new.body), 1);
        replaced.push(new.name);
    }
    Ok((out, replaced))
}

/// A table cell: one line, no column breaks.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The fields of a configuration schema, in the schema's order: `name` with whether it
/// is required, its choices, its default, and whether it is write-only.
pub fn fields(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "none".into();
    };
    if properties.is_empty() {
        return "none".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let defs = schema.get("$defs").and_then(Value::as_object);
    properties
        .iter()
        .map(|(name, property)| {
            let mut notes = Vec::new();
            if required.contains(&name.as_str()) {
                notes.push("required".to_string());
            }
            let choices = choices(property, defs);
            if !choices.is_empty() {
                notes.push(format!("one of {}", choices.join(", ")));
            }
            if let Some(default) = property.get("default").and_then(shown) {
                notes.push(format!("default {default}"));
            }
            if property.get("writeOnly") == Some(&Value::Bool(true)) {
                notes.push("write-only".into());
            }
            if notes.is_empty() {
                format!("`{name}`")
            } else {
                format!("`{name}` ({})", notes.join("; "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The values a property may take, when the schema lists them (directly, or through a
/// `$ref` to a definition, or `oneOf`/`anyOf` of constants).
fn choices(property: &Value, defs: Option<&Map<String, Value>>) -> Vec<String> {
    let resolved = resolve(property, defs);
    if let Some(values) = resolved.get("enum").and_then(Value::as_array) {
        return values.iter().filter_map(shown).collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = resolved.get(key).and_then(Value::as_array) {
            let consts: Vec<String> = options
                .iter()
                .map(|o| resolve(o, defs))
                .filter_map(|o| {
                    o.get("const")
                        .or_else(|| o.get("enum").and_then(|e| e.get(0)))
                        .and_then(shown)
                })
                .collect();
            if !consts.is_empty() {
                return consts;
            }
        }
    }
    Vec::new()
}

/// Follow a local `$ref` (`#/$defs/...`), also inside a one-item `allOf`.
fn resolve<'a>(property: &'a Value, defs: Option<&'a Map<String, Value>>) -> &'a Value {
    let target = property.get("$ref").or_else(|| {
        property
            .get("allOf")
            .and_then(Value::as_array)
            .filter(|a| a.len() == 1)
            .and_then(|a| a[0].get("$ref"))
    });
    target
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs?.get(name))
        .unwrap_or(property)
}

/// A value as the catalogue shows it; `None` for nothing worth showing (null, empty).
fn shown(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(format!("`{s}`")),
        Value::Array(a) if a.is_empty() => None,
        Value::Object(o) if o.is_empty() => None,
        other => Some(format!("`{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plugin(name: &str, kind: &'static str, top: bool, schema: Value) -> PluginDescription {
        PluginDescription {
            name: name.into(),
            kind,
            version: "1.0.0".into(),
            description: format!("Does {name} | well."),
            config_schema: schema,
            capabilities: Vec::new(),
            contract: "0.2.0".into(),
            source: "builtin".into(),
            top_level_fields: top,
            granted: Vec::new(),
            abilities: Vec::new(),
            https_only: Vec::new(),
        }
    }

    #[test]
    fn fields_say_required_choices_defaults_and_secrets_in_schema_order() {
        let schema = json!({
            "type": "object",
            "required": ["host"],
            "properties": {
                "host": {"type": "string"},
                "port": {"type": "integer", "default": 6379},
                "tls": {"$ref": "#/$defs/Tls", "default": "none"},
                "mode": {"oneOf": [{"const": "present"}, {"const": "absent"}], "default": "present"},
                "password": {"type": ["string", "null"], "writeOnly": true, "default": null},
                "headers": {"type": "object", "default": {}}
            },
            "$defs": {"Tls": {"type": "string", "enum": ["none", "starttls", "tls"]}}
        });
        assert_eq!(
            fields(&schema),
            "`host` (required), `port` (default `6379`), \
             `tls` (one of `none`, `starttls`, `tls`; default `none`), \
             `mode` (one of `present`, `absent`; default `present`), \
             `password` (write-only), `headers`"
        );
        assert_eq!(fields(&json!({"type": "object"})), "none");
    }

    #[test]
    fn blocks_table_each_kind_and_list_the_names() {
        let schema = json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]});
        let plugins = [
            plugin("http", "monitor", true, schema.clone()),
            plugin("tcp", "monitor", false, json!({"type": "object"})),
            plugin("slack", "channel", false, schema.clone()),
            PluginDescription {
                abilities: vec!["acknowledgements", "signing"],
                https_only: vec!["url".into()],
                ..plugin("pager", "channel", false, schema)
            },
        ];
        let b = blocks(&plugins);
        assert_eq!(
            b[0].body,
            "| Type | Checks | Fields |\n|---|---|---|\n\
             | `http` | Does http \\| well. | top level: `url` (required) |\n\
             | `tcp` | Does tcp \\| well. | under `config`: none |\n"
        );
        assert_eq!(
            b[1].body,
            "| Type | Sends | Asks for | Fields |\n|---|---|---|---|\n\
             | `slack` | Does slack \\| well. | nothing | `url` (required) |\n\
             | `pager` | Does pager \\| well. | `acknowledgements`, `signing`, https `url` | `url` (required) |\n"
        );
        assert_eq!(
            b[3].body,
            "- Monitors: `http`, `tcp`.\n- Channels: `slack`, `pager`.\n"
        );
        assert_eq!(b[2].body, "| Step | Does | Fields |\n|---|---|---|\n");
        let with_step = [plugin("rota", "pipeline", false, json!({"type": "object"}))];
        let b = blocks(&with_step);
        assert_eq!(
            b[2].body,
            "| Step | Does | Fields |\n|---|---|---|\n| `rota` | Does rota \\| well. | none |\n"
        );
        assert!(
            b[3].body.ends_with("- Alert pipeline steps: `rota`.\n"),
            "{}",
            b[3].body
        );
    }

    #[test]
    fn update_rewrites_only_the_blocks_a_text_holds() {
        let generated = vec![
            Block {
                name: "monitors",
                body: "new table\n".into(),
            },
            Block {
                name: "builtins",
                body: "- new\n".into(),
            },
        ];
        let text = format!(
            "# Title\n\nprose\n{}\nold table\nmore old\n{}\n\nafter\n",
            begin_marker("monitors"),
            end_marker("monitors")
        );
        let (out, replaced) = update(&text, &generated).expect("update");
        assert_eq!(replaced, vec!["monitors"]);
        assert_eq!(
            out,
            format!(
                "# Title\n\nprose\n{}\nnew table\n{}\n\nafter\n",
                begin_marker("monitors"),
                end_marker("monitors")
            )
        );
        assert_eq!(
            blocks_in(&out).expect("blocks"),
            vec![("monitors".to_string(), "new table\n".to_string())]
        );
        // Already up to date: nothing changes.
        assert_eq!(update(&out, &generated).expect("again").0, out);
        // A block without its end, or of a name nobody generates, is refused.
        let cut = format!("{}\nold\n", begin_marker("monitors"));
        assert!(update(&cut, &generated).is_err());
        let unknown = format!("{}\nx\n{}\n", begin_marker("other"), end_marker("other"));
        assert!(update(&unknown, &generated).is_err());
    }
}
