"""Who can get in: TLS credentials, private folders and files, the cluster's HTTP servers."""
