import { AssignerProtocol } from 'kafkajs'
import type { Logger } from 'pino'
import { decodeJoinData, PROTOCOL, type RunsGroup } from './group.js'

/**
 * Which member owns which partition, and where it is reached: each member
 * publishes its peer URL in its join metadata (as Kafka Streams members
 * publish `application.server`), and the group's description pairs it with
 * the member's assignment. Read again after every rebalance this process
 * takes part in, and after a member could not be reached; while the group
 * is rebalancing nobody is known to own anything.
 */
export class OwnerMap {
  private urls: ReadonlyMap<number, string> | undefined
  private reading: Promise<ReadonlyMap<number, string> | undefined> | undefined
  private generation = 0

  constructor (private readonly group: RunsGroup, private readonly runsTopic: string, private readonly log: Logger) {}

  /** The layout may have changed: read it again on next use. */
  invalidate (): void {
    this.urls = undefined
    this.generation++
  }

  /** Every partition's owner URL, or undefined while the group is not stable. */
  async all (): Promise<ReadonlyMap<number, string> | undefined> {
    if (this.urls) return this.urls
    this.reading ??= this.read().finally(() => { this.reading = undefined })
    return this.reading
  }

  async ownerOf (partition: number): Promise<string | undefined> {
    return (await this.all())?.get(partition)
  }

  private async read (): Promise<ReadonlyMap<number, string> | undefined> {
    const generation = this.generation
    try {
      const group = await this.group.describe()
      if (group.state !== 'Stable' || group.protocol !== PROTOCOL) return undefined
      const urls = new Map<number, string>()
      for (const member of group.members) {
        const url = decodeJoinData(AssignerProtocol.MemberMetadata.decode(member.memberMetadata)?.userData ?? Buffer.alloc(0))?.url
        const assigned = AssignerProtocol.MemberAssignment.decode(member.memberAssignment)?.assignment[this.runsTopic] ?? []
        if (url !== undefined) for (const p of assigned) urls.set(p, url)
      }
      if (generation === this.generation) this.urls = urls
      return urls
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'the runs group could not be described')
      return undefined
    }
  }
}
