/**
 * Lookups that arrive while earlier ones are in flight share the next round trip.
 *
 * The first lookup is sent at once, so an idle service adds no wait; under load the
 * requests that arrive while `maxInFlight` statements are out queue up and leave together
 * in one statement when one returns. Each request still reads the database after it
 * arrived (nothing is cached), while the driver's and the server's cost per statement,
 * which dominate a one-row lookup, are paid once per batch instead of once per request.
 */

interface Waiting<K, V> {
  key: K
  resolve: (value: V) => void
  reject: (error: unknown) => void
}

export class BatchedLookups<K, V> {
  private queue: Waiting<K, V>[] = []
  private inFlight = 0

  /**
   * @param lookUp answers a batch: one value per key, in the keys' order
   * @param maxInFlight statements out at once (each holds a pooled connection)
   * @param maxBatch most keys in one statement
   */
  constructor(
    private readonly lookUp: (keys: K[]) => Promise<V[]>,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
  ) {}

  find(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.queue.push({ key, resolve, reject })
      this.send()
    })
  }

  private send(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch)
      this.inFlight++
      this.lookUp(batch.map((waiting) => waiting.key)).then(
        (values) => this.settle(batch, (waiting, i) => waiting.resolve(values[i] as V)),
        (error: unknown) => this.settle(batch, (waiting) => waiting.reject(error)),
      )
    }
  }

  private settle(batch: Waiting<K, V>[], each: (waiting: Waiting<K, V>, i: number) => void): void {
    this.inFlight--
    batch.forEach(each)
    this.send()
  }
}
