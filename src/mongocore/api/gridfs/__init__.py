"""GridFS (the GridFS spec, gridfs-spec.md): files larger than a document, stored as
a files collection document and numbered chunks, on the public API (Database,
Collection, Cursor, ClientSession).

Modules: :mod:`.errors` (GridFSError and its subclasses), :mod:`.file_model` (the
data model: chunk size, the fields of the two collections, "TFileId Queries"),
:mod:`.deadline` (timeoutMS for a whole operation or a stream's lifetime, the CSOT
spec's "GridFS API"), :mod:`.indexes` (the spec's "Indexes"), :mod:`.grid_in`
(GridIn: "File Upload"), :mod:`.grid_out` (GridOut: "File Download", "Partial File
Retrieval"), :mod:`.grid_out_cursor` (GridOutCursor: "Generic Find on Files
Collection"), :mod:`.bucket` (GridFSBucket: the spec's API) and :mod:`.grid_fs` (the
legacy GridFS class). :mod:`mongocore.gridfs` re-exports them under pymongo's module
names (``gridfs``, ``gridfs.errors``, ``gridfs.grid_file``).
"""
