// The pure core under mutation testing (stryker.config.mjs, docs/testing.md).
// A group names the modules it mutates and the few unit test files that
// exercise them (test/…ts, run compiled from .mutation-build/): a mutant
// never waits for the whole suite, and each group stays well under 30 min.

/** group → the modules it mutates and the tap test files that cover them. */
export const groups = {
  telemetry: {
    mutate: ['src/telemetry/schema.ts', 'src/telemetry/record.ts'],
    testFiles: ['test/telemetry/record.test.ts']
  },
  validation: {
    mutate: ['src/validation/case.ts', 'src/validation/formats.ts', 'src/validation/identifiers.ts', 'src/validation/schema.ts'],
    testFiles: [
      'test/validation/formats.test.ts', 'test/validation/identifiers.test.ts', 'test/validation/schema.test.ts',
      'test/telemetry/record.test.ts', 'test/evidence/envelope.test.ts'
    ]
  },
  envelope: {
    mutate: ['src/evidence/envelope.ts'],
    testFiles: ['test/evidence/envelope.test.ts']
  },
  auth: {
    mutate: ['src/auth/jwt.ts', 'src/auth/tenant.ts', 'src/auth/tenant-assertion.ts'],
    testFiles: ['test/auth/jwt.test.ts', 'test/auth/tenant.test.ts', 'test/auth/tenant-assertion.test.ts']
  },
  config: {
    mutate: ['src/config/load.ts'],
    testFiles: ['test/config/load.test.ts']
  },
  runs: {
    mutate: ['src/runs/machine.ts', 'src/runs/events.ts'],
    testFiles: ['test/runs/machine.test.ts', 'test/runs/events.test.ts']
  }
}
