from vkdoctor.launch import main

main()
