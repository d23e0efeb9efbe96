/**
 * Framing a produce request around its body without copying the body.
 *
 * kafkajs frames every request by copying its body into a new encoder after
 * the header, then that into another after the size, each zero-filled and
 * grown by doubling: for a 100 KB batch, two copies and 256 KB of fresh
 * memory per send. Our produce encoder leaves room in front of the body and
 * marks its encoder with a frame; kafkajs's `Encoder#writeEncoder`, patched
 * with framedWriteEncoder, then writes the header and the size into that
 * room. Any other encoder is framed by copying, as kafkajs does.
 */

/** The part of kafkajs's Encoder these functions touch. */
export interface EncoderLike { buf: Buffer, offset: number, [FRAME]?: Frame | undefined }
export type WriteEncoder = (this: EncoderLike, value: EncoderLike) => EncoderLike

/** Where an encoder's bytes sit in `full`, whose bytes before `start` are free. */
interface Frame { full: Buffer, start: number }
const FRAME = Symbol('frame')

/** Room for kafkajs's frame: size, API key and version, correlation id and the client id (up to 242 bytes of it). */
export const FRAME_HEADROOM = 256

/** `encoder` holding the bytes of `full` from `start` on, with the room before them. */
export function framed<E extends EncoderLike> (encoder: E, full: Buffer, start: number): E {
  encoder.buf = full.subarray(start)
  encoder.offset = encoder.buf.length
  encoder[FRAME] = { full, start }
  return encoder
}

/**
 * kafkajs's `Encoder#writeEncoder`, which appends `value`'s bytes, except
 * when `value` has a frame with room for what this encoder holds: then those
 * bytes go into the room before `value`'s, and this encoder becomes a view of
 * both, copying nothing of `value`. The frame passes to this encoder (for
 * the next level of framing) and leaves `value`, so no two encoders write
 * into the same room.
 */
export function framedWriteEncoder (original: WriteEncoder): WriteEncoder {
  return function (this: EncoderLike, value: EncoderLike): EncoderLike {
    const frame = value?.[FRAME]
    if (frame === undefined || this.offset > frame.start) return original.call(this, value)
    const start = frame.start - this.offset
    this.buf.copy(frame.full, start, 0, this.offset)
    this.buf = frame.full.subarray(start, frame.start + value.offset)
    this.offset = this.buf.length
    this[FRAME] = { full: frame.full, start }
    value[FRAME] = undefined
    return this
  }
}
