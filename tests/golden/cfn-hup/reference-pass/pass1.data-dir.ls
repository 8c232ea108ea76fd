total 12
drwx------ 2 root root 4096 Nov 29 20:47 .
drwx------ 3 root root 4096 Nov 29 20:47 ..
-rw------- 1 root root  509 Nov 29 20:47 metadata_db.json
