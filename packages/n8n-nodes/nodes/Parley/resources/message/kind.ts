import type { ActionKind } from '../../shared/actions';
import { MESSAGE_STATUSES } from '../../shared/statuses';

export const messageKind: ActionKind = { path: 'messages', idParameter: 'messageId', noun: 'message', statuses: MESSAGE_STATUSES };
