ln -s dnf /usr/bin/yum
run pinned
rpm -q cfn-tiny-rpm
run again
run upgrade
rpm -q cfn-tiny-rpm
run latest
run downgrade
rpm -q cfn-tiny-rpm
run unknown
rpm -q cfn-tiny-rpm
