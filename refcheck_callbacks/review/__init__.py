"""`refcheck review`: a person labels the answers the random audit drew (`engine.audit`), in a
terminal; the labels go back into the audit file."""
