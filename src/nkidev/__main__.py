from nkidev.entry import main

main()
