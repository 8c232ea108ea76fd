//! The clock section: this host's clock against the `Date` header of CloudFormation's
//! answer to the network probe. SigV4 refuses requests signed more than 5 minutes away
//! from the service's time, so that is a failure; from 1 minute on it is a warning.

use super::network;
use super::setup::Setup;
use super::{Check, Context};
use chrono::{DateTime, Utc};
use std::time::SystemTime;

/// SigV4's tolerance.
const REJECTED_FROM_SECONDS: i64 = 5 * 60;
const WARNED_FROM_SECONDS: i64 = 60;

pub fn checks(ctx: &Context) -> Vec<Check> {
    let id = "clock.offset";
    let setup = Setup::of(ctx);
    let reached = match network::cloudformation_answer(ctx, &setup) {
        Ok(reached) => reached,
        Err(why) => {
            return vec![Check::skipped(id, format!("not checked: no answer from CloudFormation ({why})"))];
        }
    };
    // Only the endpoint's own clock: a proxy relaying plain http may answer with its own
    // Date (or answer itself, a 407), which says nothing of SigV4's (issue 30).
    if let Some(proxy) = &reached.relayed_by {
        return vec![Check::skipped(
            id,
            format!("not checked: the answer came through the proxy {proxy}, whose Date may be its own"),
        )];
    }
    let Some(date) = reached.answer.header("Date") else {
        return vec![Check::skipped(id, "not checked: CloudFormation's answer has no Date header")];
    };
    let Some(service) = parse_http_date(date) else {
        // Shown bounded and printable: it is the server's text.
        let shown: String = date.chars().filter(|c| !c.is_control()).take(64).collect();
        return vec![Check::skipped(id, format!("not checked: CloudFormation's Date header is not a date: {shown}"))];
    };
    vec![judge(id, offset_seconds(service, reached.local_time), precision_seconds(reached.round_trip))]
}

/// How far off the measured offset may be, in whole seconds: the `Date` header's
/// second was cut (half a second either way from its middle), and the service wrote it
/// somewhere in the round trip, whose middle is taken (half the round trip either way).
/// A host whose offset is within it agrees as far as one answer can tell; saying "1 s
/// behind" of it would claim a precision the measure does not have.
fn precision_seconds(round_trip: std::time::Duration) -> u64 {
    (500 + round_trip.as_millis() as u64 / 2).div_ceil(1000)
}

/// An HTTP `Date` (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, an RFC 2822 form).
pub fn parse_http_date(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc2822(text.trim()).ok().map(|d| d.with_timezone(&Utc))
}

/// The service's time minus this host's, in whole seconds.
fn offset_seconds(service: DateTime<Utc>, local: SystemTime) -> i64 {
    let local = DateTime::<Utc>::from(local);
    // The Date header drops the fraction of its second: take the middle of that second,
    // and round the difference to whole seconds.
    (service - local).num_milliseconds().saturating_add(500 + 500).div_euclid(1000)
}

fn judge(id: &str, offset: i64, precision: u64) -> Check {
    let size = offset.unsigned_abs();
    let words = match size {
        _ if size <= precision => {
            return Check::ok(
                id,
                format!("this host's clock agrees with CloudFormation's (Date header), to within {precision} s"),
            );
        }
        _ if size < 60 => format!("{size} s"),
        _ => format!("{} min {} s", size / 60, size % 60),
    };
    let side = if offset > 0 { "behind" } else { "ahead of" };
    let found = format!("this host's clock is {words} {side} CloudFormation's (Date header)");
    let sync = "sync the clock with chrony or ntp (on EC2 the Amazon Time Sync Service, 169.254.169.123), e.g. \
                `chronyc makestep`";
    if size as i64 > REJECTED_FROM_SECONDS {
        Check::failed(id, format!("{found}: SigV4 rejects requests more than 5 minutes off"), sync)
    } else if size as i64 >= WARNED_FROM_SECONDS {
        Check::warning(id, format!("{found}: SigV4 rejects requests from 5 minutes off"), sync)
    } else {
        Check::ok(id, found)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    #[test]
    fn reads_the_date_header_forms_servers_send() {
        let expected = DateTime::parse_from_rfc3339("1994-11-06T08:49:37Z").unwrap().with_timezone(&Utc);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(expected));
        assert_eq!(parse_http_date(" Sun, 06 Nov 1994 08:49:37 +0000 "), Some(expected));
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        assert_eq!(parse_http_date(""), None);
        assert_eq!(parse_http_date("Sun, 99 Nov 1994 08:49:37 GMT"), None);
    }

    #[test]
    fn verdicts_by_offset() {
        assert_eq!(judge("c", 0, 1).verdict, Verdict::Ok);
        assert_eq!(judge("c", 59, 1).verdict, Verdict::Ok);
        assert_eq!(judge("c", -60, 1).verdict, Verdict::Warning);
        assert_eq!(judge("c", 300, 1).verdict, Verdict::Warning);
        assert_eq!(judge("c", 301, 1).verdict, Verdict::Failed);
        let check = judge("c", 600, 1);
        assert_eq!(
            check.found,
            "this host's clock is 10 min 0 s behind CloudFormation's (Date header): SigV4 rejects requests more than 5 minutes off"
        );
        assert!(check.fix.unwrap().contains("chrony"));
        assert!(judge("c", -120, 1).found.starts_with("this host's clock is 2 min 0 s ahead of"));
    }

    /// Within the measure's precision the clocks agree; past it the offset is said.
    #[test]
    fn an_offset_within_the_precision_agrees() {
        assert_eq!(precision_seconds(Duration::from_millis(3)), 1);
        assert_eq!(precision_seconds(Duration::from_millis(1000)), 1);
        assert_eq!(precision_seconds(Duration::from_millis(1002)), 2);
        for offset in [-1, 0, 1] {
            assert!(judge("c", offset, 1).found.contains("agrees with CloudFormation's (Date header), to within 1 s"));
        }
        assert!(judge("c", 2, 1).found.starts_with("this host's clock is 2 s behind"));
        assert!(judge("c", 2, 2).found.contains("agrees"));
    }

    proptest! {
        /// Any time written as servers write `Date` reads back to the same second, and
        /// the offset from a host clock `delta` ms behind the start of that second is
        /// `delta` plus half a second (the middle of the second), rounded.
        #[test]
        fn dates_read_back_and_offsets_round(seconds in 0i64..4_102_444_800, delta in -100_000_000i64..100_000_000) {
            let service = DateTime::<Utc>::from_timestamp(seconds, 0).unwrap();
            let text = service.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
            prop_assert_eq!(parse_http_date(&text), Some(service));
            let local = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds as u64);
            let local = if delta >= 0 {
                local - Duration::from_millis(delta as u64)
            } else {
                local + Duration::from_millis(delta.unsigned_abs())
            };
            let offset = offset_seconds(service, local);
            prop_assert!((offset * 1000 - (delta + 500)).abs() <= 500, "offset {} delta {}", offset, delta);
        }

        /// A server's header is input: any text is read without a panic.
        #[test]
        fn any_text_is_read_safely(text in "\\PC{0,64}") {
            let _ = parse_http_date(&text);
        }
    }
}
