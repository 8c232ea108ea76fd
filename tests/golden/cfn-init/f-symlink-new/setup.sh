printf 't\n' > {ROOT}/f-symlink-new/target; chmod 0600 {ROOT}/f-symlink-new/target; printf 't2\n' > {ROOT}/f-symlink-new/target2
