"""The speed machinery: nothing it does changes what a run reports."""
