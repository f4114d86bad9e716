//! When an incident's notifications are held, and letting them go.
//!
//! - Dependencies: a monitor lists `dependsOn`; while one of those is down, its incident
//!   opens `suppressed`, naming the parent, and nobody is told. When the parent recovers
//!   and the child is still down, the child's incident is notified then.

use std::collections::{HashMap, HashSet};

/// If making `monitor` depend on `parents` closes a loop in `graph` (monitor id → the ids
/// it depends on), the loop as a list of ids from `monitor` back to it.
pub fn cycle_through(
    graph: &HashMap<String, Vec<String>>,
    monitor: &str,
    parents: &[String],
) -> Option<Vec<String>> {
    // Depth-first from each new parent, looking for `monitor`.
    fn walk(
        graph: &HashMap<String, Vec<String>>,
        at: &str,
        target: &str,
        seen: &mut HashSet<String>,
        path: &mut Vec<String>,
    ) -> bool {
        path.push(at.to_string());
        if at == target {
            return true;
        }
        if seen.insert(at.to_string()) {
            for next in graph.get(at).into_iter().flatten() {
                if walk(graph, next, target, seen, path) {
                    return true;
                }
            }
        }
        path.pop();
        false
    }
    let mut seen = HashSet::new();
    for parent in parents {
        let mut path = vec![monitor.to_string()];
        if walk(graph, parent, monitor, &mut seen, &mut path) {
            return Some(path);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_are_found_and_named() {
        let graph: HashMap<String, Vec<String>> = [
            ("b".to_string(), vec!["c".to_string()]),
            ("c".to_string(), vec!["a".to_string()]),
            ("d".to_string(), vec![]),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            cycle_through(&graph, "a", &["d".into(), "b".into()]),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        assert_eq!(cycle_through(&graph, "x", &["b".into()]), None);
        assert_eq!(cycle_through(&graph, "a", &["d".into()]), None);
    }
}
