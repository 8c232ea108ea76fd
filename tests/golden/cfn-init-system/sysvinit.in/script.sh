update-rc.d cfntest defaults >/dev/null; update-rc.d cfntest disable >/dev/null 2>&1
ls /etc/rc2.d /etc/rc0.d | grep cfntest || echo no-links
run start
ls /etc/rc2.d /etc/rc0.d | grep cfntest || echo no-links
echo "starts=$(cat /var/lib/cfntest/starts 2>/dev/null | wc -l)"; /etc/init.d/cfntest status || true
run changed
echo "starts=$(cat /var/lib/cfntest/starts 2>/dev/null | wc -l)"; /etc/init.d/cfntest status || true
run stop
ls /etc/rc2.d /etc/rc0.d | grep cfntest || echo no-links
echo "starts=$(cat /var/lib/cfntest/starts 2>/dev/null | wc -l)"; /etc/init.d/cfntest status || true
