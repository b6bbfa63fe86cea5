# Spins forever at import (pure CPU, no system call to interrupt).
while True:
    pass
