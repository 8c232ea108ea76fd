printf 't\n' > {ROOT}/f-symlink-replaces-file/target; printf 'regular\n' > {ROOT}/f-symlink-replaces-file/link; chmod 0640 {ROOT}/f-symlink-replaces-file/link
