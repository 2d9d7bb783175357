from vkdoctor.cli import main

main()
