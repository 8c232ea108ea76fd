printf 't\n' > {ROOT}/f-symlink-owner/target
