import { performance } from 'node:perf_hooks'
import type {
  FolderPage,
  FolderRecord,
  ImportCounts,
  ImportData,
  ListFoldersQuery,
  SessionUser,
  Store,
  UserRecord,
} from './store.js'

/**
 * A Store that times every call of the Store it wraps and reports it to `observe` (the
 * HTTP layer feeds a Prometheus histogram). A decorator, so the adapters stay free of
 * metrics code and both backends are measured the same way.
 */

export type Outcome = 'ok' | 'error'
export type ObserveStoreCall = (operation: keyof Store, outcome: Outcome, seconds: number) => void

export class InstrumentedStore implements Store {
  constructor(
    private readonly inner: Store,
    private readonly observe: ObserveStoreCall,
  ) {}

  get kind(): string {
    return this.inner.kind
  }

  private async timed<T>(operation: keyof Store, call: () => Promise<T>): Promise<T> {
    const start = performance.now()
    try {
      const result = await call()
      this.observe(operation, 'ok', (performance.now() - start) / 1000)
      return result
    } catch (error) {
      this.observe(operation, 'error', (performance.now() - start) / 1000)
      throw error
    }
  }

  /** Not timed: a synchronous read of a counter, asked on every cached request. */
  dataVersion(): string | undefined {
    return this.inner.dataVersion?.()
  }

  migrate(): Promise<void> {
    return this.timed('migrate', () => this.inner.migrate())
  }
  findSessionUser(sessionId: string, now: number): Promise<SessionUser | null> {
    return this.timed('findSessionUser', () => this.inner.findSessionUser(sessionId, now))
  }
  listFolders(query: ListFoldersQuery): Promise<FolderPage | null> {
    return this.timed('listFolders', () => this.inner.listFolders(query))
  }
  importData(data: ImportData): Promise<ImportCounts> {
    return this.timed('importData', () => this.inner.importData(data))
  }
  findUser(idOrUsername: string): Promise<UserRecord | null> {
    return this.timed('findUser', () => this.inner.findUser(idOrUsername))
  }
  listUsers(): Promise<UserRecord[]> {
    return this.timed('listUsers', () => this.inner.listUsers())
  }
  setUserSuspended(userId: string, suspended: boolean, now: number): Promise<boolean> {
    return this.timed('setUserSuspended', () => this.inner.setUserSuspended(userId, suspended, now))
  }
  deleteSession(sessionId: string): Promise<boolean> {
    return this.timed('deleteSession', () => this.inner.deleteSession(sessionId))
  }
  findFolder(folderId: string): Promise<FolderRecord | null> {
    return this.timed('findFolder', () => this.inner.findFolder(folderId))
  }
  markFolderDeleted(folderId: string, now: number): Promise<boolean> {
    return this.timed('markFolderDeleted', () => this.inner.markFolderDeleted(folderId, now))
  }
  listLiveFolders(ownerId: string): Promise<FolderRecord[]> {
    return this.timed('listLiveFolders', () => this.inner.listLiveFolders(ownerId))
  }
  countUsers(): Promise<number> {
    return this.timed('countUsers', () => this.inner.countUsers())
  }
  ping(): Promise<void> {
    return this.timed('ping', () => this.inner.ping())
  }
  close(): Promise<void> {
    return this.inner.close()
  }
}
