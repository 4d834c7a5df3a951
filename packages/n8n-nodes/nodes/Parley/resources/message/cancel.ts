/** Message → Cancel: POST /messages/{id}/cancel (only Queued messages scheduled > 30 s ahead). */
import { cancelAction } from '../../shared/actions';
import { messageKind } from './kind';

export const cancel = cancelAction(messageKind);
