"""The Queue controller: the Open/Closing/Closed state machine and the shell that keeps it."""
