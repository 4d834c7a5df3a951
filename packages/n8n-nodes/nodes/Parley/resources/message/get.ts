/** Message → Get: GET /messages/{id}. */
import { getAction } from '../../shared/actions';
import { messageKind } from './kind';

export const get = getAction(messageKind);
