print("runnel")
