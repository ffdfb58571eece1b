//! How the binaries print an error: the one text both give for an error and its causes.

/// `error` and its causes, as `error: cause: cause`, each cause left out when the
/// message before it says it already (most messages here end with their cause's): what
/// the binaries print, so that a reason is never shown twice.
pub fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let said = next.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Opening {
        #[error("opening {path}: {source}")]
        Says { path: &'static str, source: std::io::Error },
        #[error("opening {path}")]
        Quiet { path: &'static str, source: std::io::Error },
    }

    #[test]
    fn a_cause_the_message_already_gives_is_not_repeated() {
        let says = Opening::Says { path: "a", source: std::io::Error::other("denied") };
        assert_eq!(chain_text(&says), "opening a: denied");
        let wrapped = std::io::Error::new(std::io::ErrorKind::NotFound, says);
        assert_eq!(chain_text(&wrapped), "opening a: denied");
    }

    #[test]
    fn a_cause_the_message_leaves_out_is_added() {
        let quiet = Opening::Quiet { path: "b", source: std::io::Error::other("denied") };
        assert_eq!(chain_text(&quiet), "opening b: denied");
        let wrapped = std::io::Error::new(std::io::ErrorKind::NotFound, quiet);
        assert_eq!(chain_text(&wrapped), "opening b: denied");
    }
}
