//! Small pieces of the sentences messages are made of.

/// `a, b or c` (`a` alone, `a or b` for two, empty for none): the choices a message offers.
pub fn or_list(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_a_sentence() {
        assert_eq!(or_list(&[]), "");
        assert_eq!(or_list(&["up"]), "up");
        assert_eq!(or_list(&["asc", "desc"]), "asc or desc");
        assert_eq!(
            or_list(&["http", "net", "tls", "smtp"]),
            "http, net, tls or smtp"
        );
    }
}
