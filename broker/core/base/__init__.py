"""What every other part of the core uses: the message and its wire form, channels and
outboxes, usage meters, the clock, settings and policies, cron entries, selectors,
destination names, the guard, chores, the producer audit, observation, the network's
headers and the errors.  They import nothing of the core outside ``base``."""
