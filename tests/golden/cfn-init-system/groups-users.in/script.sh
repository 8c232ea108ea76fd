run create
getent group cfnapp cfnops cfnnum; getent passwd cfnuser cfnplain; id cfnuser; [ -e /srv/cfnuser ] && echo home-created || echo no-home-created
run same
run modify
getent passwd cfnuser; id cfnuser
run gid-mismatch
run uid-mismatch
run unknown-group
getent passwd cfnnew || echo no-cfnnew
