"""The cluster at run time: its jobs, the job book, the watch, the replacement, the scaling, the usage."""
