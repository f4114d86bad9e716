//! An alert pipeline step as a third party would write it, on the SDK (contract 0.3.0),
//! that does what its configuration says: `trap` (a panic), `spin` (loops past its
//! budget), `nonsense` (routes to a channel that is no channel), `stranger` (routes to a
//! well-formed channel id of no channel of the workspace), `enrich` (adds
//! `{"runbook": ...}`), or `drop` (drops the alert with a reason).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_plugin_sdk::typed::TypedConfig;
use tocsin_plugin_sdk::{Decision, Info, Pipeline, PipelineAlert, export_pipeline};

/// What the step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Behaviour {
    Trap,
    Spin,
    Nonsense,
    Stranger,
    Enrich,
    Drop,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "jam pipeline step")]
pub struct JamConfig {
    pub behaviour: Behaviour,
}

impl TypedConfig for JamConfig {}

struct Jam;

impl Pipeline for Jam {
    type Config = JamConfig;

    fn info() -> Info {
        Info {
            name: "test-jam",
            version: "0.3.0",
            description: "Traps, spins, answers nonsense, enriches or drops, as configured.",
            capabilities: &[],
        }
    }

    fn decide(config: JamConfig, alert: PipelineAlert) -> Decision {
        match config.behaviour {
            Behaviour::Trap => panic!("jam asked about {}", alert.event),
            Behaviour::Spin => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            Behaviour::Nonsense => Decision::Route(vec!["ch_nobody".into()]),
            Behaviour::Stranger => Decision::Route(vec!["ch_01JD6Z3Y5N8Q2W7R4T6V9X0B1C".into()]),
            Behaviour::Enrich => Decision::Enrich(format!(
                r#"{{"runbook":"https://runbooks.example/{}","tags":{}}}"#,
                alert.event,
                alert.tags.len()
            )),
            Behaviour::Drop => Decision::Drop(format!("{} is noise", alert.event)),
        }
    }
}

export_pipeline!(Jam);
