from fastapply.cli import main

main()
