import type { LifecycleRule } from '@aws-sdk/client-s3'

/** The rule the gateway adds to the bucket's lifecycle, by this id; any other rule is the operator's. */
export const ABORT_RULE_ID = 'evidence-gateway-abort-incomplete-multipart-uploads'

/**
 * The bucket's lifecycle rules with the gateway's rule in them, aborting
 * multipart uploads `days` after they began, or undefined when nothing is
 * to change: the rule is there with `days`, or an enabled rule of the
 * operator's already aborts incomplete uploads of the whole bucket (theirs
 * stands, whatever its days). Every other rule is kept as it is.
 */
export function withAbortRule (rules: readonly LifecycleRule[], days: number): LifecycleRule[] | undefined {
  const ours: LifecycleRule = { ID: ABORT_RULE_ID, Status: 'Enabled', Filter: { Prefix: '' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: days } }
  const at = rules.findIndex(r => r.ID === ABORT_RULE_ID)
  if (at >= 0) {
    const found = rules[at]!
    if (found.Status === 'Enabled' && found.AbortIncompleteMultipartUpload?.DaysAfterInitiation === days) return undefined
    return rules.map((r, i) => i === at ? ours : r)
  }
  if (rules.some(r => r.Status === 'Enabled' && r.AbortIncompleteMultipartUpload?.DaysAfterInitiation !== undefined && wholeBucket(r))) return undefined
  return [...rules, ours]
}

/** Whether a rule applies to every object: no prefix, tag or size condition. */
function wholeBucket (rule: LifecycleRule): boolean {
  const f = rule.Filter
  return !rule.Prefix && (f === undefined || (!f.Prefix && f.Tag === undefined && f.And === undefined && f.ObjectSizeGreaterThan === undefined && f.ObjectSizeLessThan === undefined))
}
