/** A command line that cannot be run as given: the usage goes to stderr and the exit code is 2. */
export class UsageError extends Error {
  constructor (usage: string) {
    super(usage)
    this.name = 'UsageError'
  }
}
