/**
 * How an import fault found against the database is worded, the same on every backend:
 * users, scripts and the contract tests read these messages after the record's position
 * (`folders[3]: ...`).
 */
export const importFaults = {
  idTaken: (id: string) => `id ${id} already exists`,
  usernameTaken: (username: string) => `username ${username} already exists`,
  unknownUser: (userId: string) => `user ${userId} does not exist`,
  unknownOwner: (ownerId: string) => `owner ${ownerId} does not exist`,
  badParent: (folderId: string) => `parent folder ${folderId} does not exist or belongs to another owner`,
}
