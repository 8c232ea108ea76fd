printf 'old\n' > {ROOT}/f-owner-unknown-existing/o
