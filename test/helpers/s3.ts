import { S3Client, GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand } from '@aws-sdk/client-s3'
import { createHash } from 'node:crypto'
import type { InfraEnv } from './infra.js'

export function s3Client (infra: InfraEnv): S3Client {
  return new S3Client({ endpoint: infra.S3_ENDPOINT, region: infra.AWS_REGION, forcePathStyle: true, credentials: { accessKeyId: infra.AWS_ACCESS_KEY_ID, secretAccessKey: infra.AWS_SECRET_ACCESS_KEY } })
}

/** SHA-256 of the object an `s3://bucket/key` uri names. */
export async function sha256Of (s3: S3Client, uri: string): Promise<string> {
  const { host: bucket, pathname } = new URL(uri)
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: decodeURIComponent(pathname.slice(1)) }))
  const hash = createHash('sha256')
  for await (const chunk of res.Body as AsyncIterable<Buffer>) hash.update(chunk)
  return hash.digest('hex')
}

/** The tenants' objects in `bucket`: without the documents a cluster keeps under `_gateway/` (claims, keys, heartbeats). */
export async function objectKeys (s3: S3Client, bucket: string): Promise<string[]> {
  const res = await s3.send(new ListObjectsV2Command({ Bucket: bucket }))
  return (res.Contents ?? []).map(o => o.Key!).filter(k => !k.startsWith('_gateway/'))
}

/** The cluster's documents in `bucket`, relative to `_gateway/`. */
export async function gatewayKeys (s3: S3Client, bucket: string, prefix = ''): Promise<string[]> {
  const res = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `_gateway/${prefix}` }))
  return (res.Contents ?? []).map(o => o.Key!.slice('_gateway/'.length))
}

export async function openUploads (s3: S3Client, bucket: string): Promise<string[]> {
  const res = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
  return (res.Uploads ?? []).map(u => u.Key!)
}

/**
 * The keys of the incomplete multipart uploads that hold a part. The gateway
 * records an upload's id before it sends the first part, and its sweep
 * aborts by that id alone: a process killed before that record leaves its
 * upload to the bucket's lifecycle rule (docs/storage.md). A test that kills
 * one mid-upload and expects the sweep to clean up waits for this.
 */
export async function uploadsWithParts (s3: S3Client, bucket: string): Promise<string[]> {
  const res = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
  const keys: string[] = []
  for (const u of res.Uploads ?? []) {
    const { Parts } = await s3.send(new ListPartsCommand({ Bucket: bucket, Key: u.Key, UploadId: u.UploadId }))
    if ((Parts ?? []).length > 0) keys.push(u.Key!)
  }
  return keys
}
