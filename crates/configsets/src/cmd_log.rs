//! The command log (`cfn-init-cmd.log`, LOG-05): its banners and lines, written by the
//! engine around each config and by the sections that run commands.

/// `text` centred in 60 columns of `fill`, like Python's `str.center`.
pub fn banner(text: &str, fill: char) -> String {
    let width = 60usize;
    let len = text.chars().count();
    if len >= width {
        return text.to_string();
    }
    let margin = width - len;
    let left = margin / 2 + (margin & width & 1);
    let fill_str = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
    format!("{}{text}{}", fill_str(left), fill_str(margin - left))
}

pub(crate) fn cmd_log(message: &str) {
    tracing::info!(target: "cfn_cmd", "{message}");
}

/// One line of a command's output in the command log: tab-prefixed, formatted straight
/// into the log's line (a long line is not copied once more on the way).
pub(crate) fn cmd_log_output(line: &[u8]) {
    tracing::info!(target: "cfn_cmd", "\t{}", String::from_utf8_lossy(line));
}
