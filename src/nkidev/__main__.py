from nkidev.cli import main

main()
