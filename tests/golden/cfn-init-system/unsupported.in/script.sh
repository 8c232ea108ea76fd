run managers
