//! Small pieces of the sentences messages are made of.

/// `a, b or c` (`a` alone, `a or b` for two, empty for none): the choices a message offers.
pub fn or_list(items: &[&str]) -> String {
    joined(items, "or")
}

/// `a, b and c`: the things a message names together.
pub fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    joined(&items, "and")
}

/// Longest failure reason stored or sent, in bytes.
pub const MAX_REASON_BYTES: usize = 1024;

/// Text from a plugin made safe to store and show: NUL characters (which PostgreSQL text
/// cannot hold) and other control characters but newline and tab become spaces, and the
/// text is cut at a character boundary to at most `max_bytes`, ending in `…` when cut.
pub fn bounded(text: &str, max_bytes: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                ' '
            } else {
                c
            }
        })
        .collect();
    if clean.len() <= max_bytes {
        return clean;
    }
    let ellipsis = '…';
    let mut end = max_bytes.saturating_sub(ellipsis.len_utf8());
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ellipsis}", &clean[..end])
}

fn joined(items: &[&str], word: &str) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {word} {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    }
}

/// Text safe inside HTML elements and attributes.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape_html("<b>\"A&B\"</b>'"),
            "&lt;b&gt;&quot;A&amp;B&quot;&lt;/b&gt;&#39;"
        );
    }

    #[test]
    fn lists_read_as_a_sentence() {
        assert_eq!(or_list(&[]), "");
        assert_eq!(or_list(&["up"]), "up");
        assert_eq!(or_list(&["asc", "desc"]), "asc or desc");
        assert_eq!(
            or_list(&["http", "net", "tls", "smtp"]),
            "http, net, tls or smtp"
        );
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
    }

    #[test]
    fn plugin_text_is_cleaned_and_cut_at_a_character() {
        assert_eq!(bounded("a\u{0}b\r\nc", 100), "a b \nc");
        let long = "é".repeat(1000);
        let cut = bounded(&long, MAX_REASON_BYTES);
        assert!(cut.len() <= MAX_REASON_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert_eq!(bounded("short", 10), "short");
    }
}
