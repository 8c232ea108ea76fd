//! `Fn::Cidr`: `count` consecutive subnets of `2^bits` addresses from the start of a block.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub fn subnets(block: &str, count: u64, bits: u32) -> Result<Vec<String>, String> {
    let (address, prefix) = block.split_once('/').ok_or_else(|| format!("{block:?} is not a CIDR block"))?;
    let address: IpAddr = address.parse().map_err(|_| format!("{block:?} is not a CIDR block"))?;
    let prefix: u32 = prefix.parse().map_err(|_| format!("{block:?} is not a CIDR block"))?;
    let width = if address.is_ipv4() { 32 } else { 128 };
    if prefix > width {
        return Err(format!("{block:?} is not a CIDR block"));
    }
    if bits == 0 || bits > width - prefix {
        return Err(format!("{bits} subnet bits do not fit in {block}"));
    }
    if count == 0 || count > 256 || u128::from(count) > 1u128 << (width - prefix - bits).min(127) {
        return Err(format!("{count} subnets of {bits} bits do not fit in {block} (1 to 256)"));
    }
    let start = match address {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    };
    let host_bits = width - prefix;
    let network = if host_bits == 128 { 0 } else { start >> host_bits << host_bits };
    let length = width - bits;
    Ok((0..u128::from(count))
        .map(|i| {
            let subnet = network + (i << bits);
            match address {
                IpAddr::V4(_) => format!("{}/{length}", Ipv4Addr::from(subnet as u32)),
                IpAddr::V6(_) => format!("{}/{length}", Ipv6Addr::from(subnet)),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn blocks_that_cannot_hold_the_subnets_are_errors() {
        assert!(subnets("10.0.0.0/24", 3, 9).is_err());
        assert!(subnets("10.0.0.0/24", 3, 0).is_err());
        assert!(subnets("10.0.0.0/30", 8, 1).is_err());
        assert!(subnets("10.0.0.0", 1, 8).is_err());
        assert!(subnets("10.0.0.0/33", 1, 8).is_err());
    }
}
