LibraryUser.run()
