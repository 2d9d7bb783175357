"""One module per subcommand; cli.py adds each to the group."""
