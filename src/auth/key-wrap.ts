import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { relative, resolve, isAbsolute } from 'node:path'
import { ConfigError } from '../config/index.js'

/** Least bytes of AUTH_KEY_WRAP_FILE: as many as the AES-256 key derived from it. */
export const WRAP_KEY_MIN_BYTES = 32
const VERSION = 'v1'
const INFO = 'evidence-gateway signing key wrap v1'

/**
 * AES-256-GCM over the signing keys' PKCS#8 PEM, with a key derived (HKDF)
 * from a file the operator keeps outside DATA_DIR: a copy of DATA_DIR (or of
 * the cluster's `_gateway/auth/keys/` in S3) then holds nothing that signs.
 * The key's kid is the associated data, so a wrapped key moved to another
 * kid's entry does not open.
 */
export class KeyWrap {
  private constructor (private readonly key: Buffer) {}

  /** Reads and checks AUTH_KEY_WRAP_FILE; a failure names the setting. */
  static fromFile (file: string, dataDir: string): KeyWrap {
    const within = relative(resolve(dataDir), resolve(file))
    if (within === '' || (!within.startsWith('..') && !isAbsolute(within))) {
      throw new ConfigError(`AUTH_KEY_WRAP_FILE ${file} is inside DATA_DIR ${dataDir}: whoever copies DATA_DIR would have the key with what it wraps`)
    }
    let secret: Buffer
    try {
      secret = readFileSync(file)
    } catch (err) {
      throw new ConfigError(`AUTH_KEY_WRAP_FILE ${file}: ${(err as Error).message}`)
    }
    if (secret.length < WRAP_KEY_MIN_BYTES) throw new ConfigError(`AUTH_KEY_WRAP_FILE ${file} holds ${secret.length} bytes; at least ${WRAP_KEY_MIN_BYTES} (openssl rand 32 > file)`)
    return new KeyWrap(Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), INFO, 32)))
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url. */
  wrap (pem: string, kid: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv).setAAD(Buffer.from(kid))
    const sealed = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()])
    return [VERSION, iv, cipher.getAuthTag(), sealed].map(p => typeof p === 'string' ? p : p.toString('base64url')).join('.')
  }

  /** The PEM, or throws when `wrapped` was not wrapped by this key for `kid`. */
  unwrap (wrapped: string, kid: string): string {
    const [version, iv, tag, sealed] = wrapped.split('.')
    if (version !== VERSION || iv === undefined || tag === undefined || sealed === undefined) throw new Error(`signing key ${kid}: not a wrapped key`)
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url')).setAAD(Buffer.from(kid)).setAuthTag(Buffer.from(tag, 'base64url'))
      return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8')
    } catch {
      throw new Error(`signing key ${kid} was wrapped by another AUTH_KEY_WRAP_FILE`)
    }
  }
}
