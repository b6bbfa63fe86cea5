# run_naive spins forever.
while True:
    pass
