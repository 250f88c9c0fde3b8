# stand-in: no messages
