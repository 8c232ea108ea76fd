//! `Fn::Cidr`: `count` consecutive subnets of `2^cidrBits` addresses from the start of a
//! block, with CloudFormation's argument rules: the block is a CIDR, `count` is 1 to
//! 256, and `cidrBits` is 1 to 32 (IPv4) or 1 to 128 (IPv6) and no more than the
//! block's host bits. The prefix arithmetic is ipnet's, checked at every width.

use ipnet::IpNet;

/// The largest `count` CloudFormation takes.
const MAX_COUNT: u64 = 256;

pub fn subnets(block: &str, count: u64, bits: u64) -> Result<Vec<String>, String> {
    let net: IpNet = block.parse().map_err(|_| format!("{block:?} is not a CIDR block (ADDRESS/PREFIX)"))?;
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(format!("the count must be 1 to {MAX_COUNT}, not {count}"));
    }
    let width = u64::from(net.max_prefix_len());
    if !(1..=width).contains(&bits) {
        return Err(format!("the subnet bits must be 1 to {width} for {block}, not {bits}"));
    }
    let host_bits = width - u64::from(net.prefix_len());
    if bits > host_bits {
        return Err(format!("{bits} subnet bits are more than the {host_bits} host bits of {block}"));
    }
    // In range: bits ≤ host bits ≤ width ≤ 128.
    let length = u8::try_from(width - bits).map_err(|_| format!("{bits} subnet bits do not fit in {block}"))?;
    let subnets: Vec<String> = net
        .trunc()
        .subnets(length)
        .map_err(|_| format!("{bits} subnet bits do not fit in {block}"))?
        .take(usize::try_from(count).unwrap_or(usize::MAX))
        .map(|subnet| subnet.to_string())
        .collect();
    if (subnets.len() as u64) < count {
        let held = match subnets.len() {
            1 => "1 subnet".to_string(),
            n => format!("{n} subnets"),
        };
        return Err(format!("{block} holds only {held} of /{length}, not {count}"));
    }
    Ok(subnets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_documented_examples() {
        // AWS's Fn::Cidr page: six /27 subnets of 192.168.0.0/24.
        assert_eq!(
            subnets("192.168.0.0/24", 6, 5).unwrap(),
            [
                "192.168.0.0/27",
                "192.168.0.32/27",
                "192.168.0.64/27",
                "192.168.0.96/27",
                "192.168.0.128/27",
                "192.168.0.160/27"
            ]
        );
        assert_eq!(subnets("2001:db8::/56", 2, 64).unwrap(), ["2001:db8::/64", "2001:db8:0:1::/64"]);
        assert_eq!(subnets("10.0.1.7/16", 1, 8).unwrap(), ["10.0.0.0/24"]);
    }

    #[test]
    fn whole_address_spaces_at_every_width() {
        // The case: the whole IPv6 space as one subnet of 128 bits (it shifted by 128).
        assert_eq!(subnets("::/0", 1, 128).unwrap(), ["::/0"]);
        assert_eq!(subnets("::/0", 2, 127).unwrap(), ["::/1", "8000::/1"]);
        assert_eq!(subnets("0.0.0.0/0", 1, 32).unwrap(), ["0.0.0.0/0"]);
        assert_eq!(
            subnets("255.255.255.255/32", 1, 0).unwrap_err(),
            "the subnet bits must be 1 to 32 for 255.255.255.255/32, not 0"
        );
        assert_eq!(subnets("ffff::/127", 256, 1).unwrap_err(), "ffff::/127 holds only 1 subnet of /127, not 256");
        assert_eq!(subnets("ffff::/126", 2, 1).unwrap(), ["ffff::/127", "ffff::2/127"]);
        assert_eq!(subnets("ffff::/112", 256, 8).unwrap().last().unwrap(), "ffff::ff00/120");
        assert_eq!(subnets("10.0.0.0/24", 1, 1).unwrap(), ["10.0.0.0/31"]);
    }

    #[test]
    fn arguments_out_of_cloudformations_ranges_are_errors() {
        assert_eq!(
            subnets("10.0.0.0/24", 3, 9).unwrap_err(),
            "9 subnet bits are more than the 8 host bits of 10.0.0.0/24"
        );
        assert_eq!(subnets("10.0.0.0/24", 3, 0).unwrap_err(), "the subnet bits must be 1 to 32 for 10.0.0.0/24, not 0");
        assert_eq!(subnets("::/0", 1, 129).unwrap_err(), "the subnet bits must be 1 to 128 for ::/0, not 129");
        assert_eq!(subnets("10.0.0.0/30", 8, 1).unwrap_err(), "10.0.0.0/30 holds only 2 subnets of /31, not 8");
        assert_eq!(subnets("10.0.0.0/8", 0, 8).unwrap_err(), "the count must be 1 to 256, not 0");
        assert_eq!(subnets("10.0.0.0/8", 257, 8).unwrap_err(), "the count must be 1 to 256, not 257");
        assert!(subnets("10.0.0.0", 1, 8).is_err());
        assert!(subnets("10.0.0.0/33", 1, 8).is_err());
        assert!(subnets("::/129", 1, 8).is_err());
        assert!(subnets("10.0.0.0/8", u64::MAX, u64::MAX).is_err());
    }

    /// The network of `block` and its host bits, for the properties.
    fn start_and_width(block: &IpNet) -> (u128, u32) {
        match block.trunc() {
            IpNet::V4(net) => (u128::from(u32::from(net.network())), 32),
            IpNet::V6(net) => (u128::from(net.network()), 128),
        }
    }

    fn any_block() -> impl Strategy<Value = IpNet> {
        prop_oneof![
            (any::<u32>(), 0u8..=32).prop_map(|(a, p)| IpNet::V4(ipnet::Ipv4Net::new(a.into(), p).unwrap())),
            (any::<u128>(), 0u8..=128).prop_map(|(a, p)| IpNet::V6(ipnet::Ipv6Net::new(a.into(), p).unwrap())),
        ]
    }

    proptest! {
        /// Any block, count and bits (in range or not) give the subnets or an error,
        /// never a panic, in the debug build that checks every shift and sum; the subnets
        /// are `count` consecutive blocks of `2^bits` addresses from the block's start.
        #[test]
        fn subnets_are_consecutive_or_an_error(block in any_block(), count in 0u64..300, bits in 0u64..140) {
            let text = block.to_string();
            let (start, width) = start_and_width(&block);
            let host_bits = u64::from(width) - u64::from(block.prefix_len());
            match subnets(&text, count, bits) {
                Ok(list) => {
                    prop_assert!((1..=256).contains(&count) && (1..=host_bits).contains(&bits));
                    prop_assert_eq!(list.len() as u64, count);
                    for (i, subnet) in list.iter().enumerate() {
                        let subnet: IpNet = subnet.parse().unwrap();
                        prop_assert_eq!(u64::from(subnet.prefix_len()), u64::from(width) - bits);
                        let (address, _) = start_and_width(&subnet);
                        // i · 2^bits from the start, with bits ≤ 128 and i < 256: in u128
                        // unless bits is 128, where only i = 0 exists.
                        let offset = if bits == 128 { 0 } else { (i as u128) << bits };
                        prop_assert_eq!(Some(address), start.checked_add(offset));
                    }
                }
                Err(message) => {
                    let fits = bits <= host_bits && (host_bits - bits >= 9 || count <= 1 << (host_bits - bits));
                    prop_assert!(
                        !(1..=256).contains(&count) || !(1..=host_bits).contains(&bits) || !fits,
                        "{} {} {}: {}", text, count, bits, message
                    );
                }
            }
        }
    }
}
