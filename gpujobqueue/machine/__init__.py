"""What this machine has: its GPUs, network interfaces, install and the package's own files."""
