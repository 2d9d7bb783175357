"""What the host is: its disks, its environment, its wgpu settings."""
