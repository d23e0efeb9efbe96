// The scenario's object store (MinIO from infra.sh), seen from the runner:
// a client, what a bucket holds, emptying it, checking what a row stored.
import { S3Client, ListObjectsV2Command, DeleteObjectsCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3'

// The SDK warns once per process that its 2027 releases need Node 22: not a
// bench's concern, in the runner nor in the gateway's stderr tail.
export const QUIET_SDK = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }

/** The AWS_* variables of infra.sh's output, for the gateway and the direct uploader. */
export const awsEnv = infraEnv => ({ AWS_ACCESS_KEY_ID: infraEnv.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: infraEnv.AWS_SECRET_ACCESS_KEY, AWS_REGION: infraEnv.AWS_REGION ?? 'us-east-1' })

/** An S3 client of infra.sh's MinIO; the runner's own environment stays the shell's. */
export function s3Client (infraEnv) {
  const aws = awsEnv(infraEnv)
  const [name] = Object.keys(QUIET_SDK)
  const had = process.env[name]
  process.env[name] = QUIET_SDK[name]
  try {
    return new S3Client({
      region: aws.AWS_REGION,
      endpoint: infraEnv.S3_ENDPOINT,
      forcePathStyle: true,
      credentials: { accessKeyId: aws.AWS_ACCESS_KEY_ID, secretAccessKey: aws.AWS_SECRET_ACCESS_KEY }
    })
  } finally {
    if (had === undefined) delete process.env[name]
    else process.env[name] = had
  }
}

/** What is in a bucket: { count, bytes, objects: [{ key, size }], openUploads (multipart uploads left open) }. */
export async function bucketContents (s3, bucket) {
  const objects = []
  let token
  do {
    const r = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }))
    for (const o of r.Contents ?? []) objects.push({ key: o.Key, size: o.Size })
    token = r.IsTruncated ? r.NextContinuationToken : undefined
  } while (token)
  let openUploads
  try { openUploads = (await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0 } catch {}
  return { count: objects.length, bytes: objects.reduce((a, o) => a + o.size, 0), objects, openUploads }
}

export async function emptyBucket (s3, bucket) {
  const { objects } = await bucketContents(s3, bucket)
  for (let i = 0; i < objects.length; i += 1000) {
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects.slice(i, i + 1000).map(o => ({ Key: o.key })), Quiet: true } }))
  }
}

/** Problems of what a row stored: not `count` objects of `bytes` each, or a multipart upload left open. */
export function checkStored (contents, count, bytes) {
  const problems = []
  const wrong = contents.objects.filter(o => o.size !== bytes)
  if (contents.count !== count) problems.push(`${contents.count} objects in the bucket after the uploads, expected ${count}`)
  if (wrong.length) problems.push(`${wrong.length} stored object(s) not ${bytes} bytes: ${wrong.slice(0, 3).map(o => `${o.key} ${o.size}`).join(', ')}`)
  if (contents.openUploads) problems.push(`${contents.openUploads} multipart upload(s) left open`)
  return problems
}
