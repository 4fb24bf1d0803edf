#!/bin/sh
# Prints a greeting for the name given as the first argument.
echo "Helo, ${1:-world}!"
