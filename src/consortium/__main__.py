from consortium.cli import main

main()
