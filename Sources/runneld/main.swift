print("runneld")
