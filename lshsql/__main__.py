from lshsql.cli import main

main()
