printf 'x\n' > {ROOT}/f-symlink-dangling-existing/link
