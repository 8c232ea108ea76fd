run first
dpkg-query -W -f '${Package}=${Version} ${Status}\n' cfn-tiny hello
echo "starts=$(cat /var/lib/cfntest/starts 2>/dev/null | wc -l)"; /etc/init.d/cfntest status || true
run again
echo "starts=$(cat /var/lib/cfntest/starts 2>/dev/null | wc -l)"
run prefix
run missing-version
run upgrade
dpkg-query -W -f '${Package}=${Version} ${Status}\n' cfn-tiny hello
